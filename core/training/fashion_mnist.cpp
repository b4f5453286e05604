// FP8 Lab — Fashion-MNIST loading (see fashion_mnist.h).
#include "training/fashion_mnist.h"

#include <cstdlib>

namespace fp8lab {

const std::vector<std::string>& fashionMnistClassNames() {
  // Zalando Research, fashion-mnist README, "Labels" table.
  static const std::vector<std::string> names = {"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
                                                 "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot"};
  return names;
}

ImageDataset ImageDataset::head(int64_t n) const {
  if (n <= 0 || n >= count) return *this;
  ImageDataset d;
  d.count = n;
  d.rows = rows;
  d.cols = cols;
  d.pixels.assign(pixels.begin(), pixels.begin() + n * features());
  d.labels.assign(labels.begin(), labels.begin() + n);
  return d;
}

std::filesystem::path fashionMnistDirectory(const std::filesystem::path& explicit_dir) {
  if (!explicit_dir.empty()) return explicit_dir;
  if (const char* env = std::getenv(kFashionMnistEnvVar); env && *env) return std::filesystem::path(env);
  return std::filesystem::path(kFashionMnistPackageDir);
}

std::filesystem::path fashionMnistFile(const std::filesystem::path& dir, const std::string& stem) {
  std::error_code ec;
  const auto gz = dir / (stem + ".gz");
  if (std::filesystem::is_regular_file(gz, ec)) return gz;
  const auto plain = dir / stem;
  if (std::filesystem::is_regular_file(plain, ec)) return plain;
  return gz;
}

namespace {

std::string installHint() {
  return std::string("Install the Debian/Ubuntu package with `sudo apt-get install dataset-fashion-mnist` "
                     "(it puts the files in ") +
         kFashionMnistPackageDir + "), or set " + kFashionMnistEnvVar +
         " (or the experiment's \"data_dir\") to a directory holding "
         "train-images-idx3-ubyte.gz, train-labels-idx1-ubyte.gz, t10k-images-idx3-ubyte.gz and "
         "t10k-labels-idx1-ubyte.gz.";
}

std::string whereFrom(const std::filesystem::path& explicit_dir) {
  if (!explicit_dir.empty()) return " (from the experiment's data_dir)";
  if (const char* env = std::getenv(kFashionMnistEnvVar); env && *env)
    return std::string(" (from ") + kFashionMnistEnvVar + ")";
  return " (the default location)";
}

} // namespace

ImageDataset loadFashionMnistSplit(const std::filesystem::path& dir, const std::string& split, int64_t limit) {
  std::error_code ec;
  const auto images_path = fashionMnistFile(dir, split + "-images-idx3-ubyte");
  const auto labels_path = fashionMnistFile(dir, split + "-labels-idx1-ubyte");
  for (const auto& p : {images_path, labels_path})
    if (!std::filesystem::is_regular_file(p, ec))
      throw DatasetMissingError("Fashion-MNIST file " + p.string() + " not found. " + installHint());
  const IdxArray images = readIdxFile(images_path, 3);
  const IdxArray labels = readIdxFile(labels_path, 1);
  if (images.dims[1] != 28 || images.dims[2] != 28)
    throw IdxError(images_path.string() + ": images are " + std::to_string(images.dims[1]) + "x" +
                   std::to_string(images.dims[2]) + ", Fashion-MNIST images are 28x28");
  if (images.dims[0] != labels.dims[0])
    throw IdxError(images_path.string() + " holds " + std::to_string(images.dims[0]) + " images but " +
                   labels_path.string() + " holds " + std::to_string(labels.dims[0]) + " labels");
  if (images.dims[0] == 0) throw IdxError(images_path.string() + ": holds no images");
  for (size_t i = 0; i < labels.data.size(); ++i)
    if (labels.data[i] > 9)
      throw IdxError(labels_path.string() + ": label " + std::to_string(labels.data[i]) + " of item " +
                     std::to_string(i) + " is outside 0..9");
  ImageDataset d;
  d.count = images.dims[0];
  if (limit > 0 && limit < d.count) d.count = limit;
  d.pixels.resize(static_cast<size_t>(d.count * d.features()));
  for (size_t i = 0; i < d.pixels.size(); ++i) d.pixels[i] = static_cast<float>(images.data[i]) / 255.0f;
  d.labels.assign(labels.data.begin(), labels.data.begin() + d.count);
  return d;
}

FashionMnist loadFashionMnist(const std::filesystem::path& explicit_dir, int64_t train_limit, int64_t test_limit) {
  FashionMnist fm;
  fm.directory = fashionMnistDirectory(explicit_dir);
  std::error_code ec;
  if (!std::filesystem::is_directory(fm.directory, ec))
    throw DatasetMissingError("Fashion-MNIST not found: the directory " + fm.directory.string() +
                              whereFrom(explicit_dir) + " does not exist. " + installHint());
  fm.train = loadFashionMnistSplit(fm.directory, "train", train_limit);
  fm.test = loadFashionMnistSplit(fm.directory, "t10k", test_limit);
  return fm;
}

} // namespace fp8lab
