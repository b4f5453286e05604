// FP8 Lab — the Fashion-MNIST data set (Zalando Research, Xiao, Rasul & Vollgraf 2017,
// arXiv:1708.07747): 60 000 training and 10 000 test images of 28×28 grey pixels, 10 classes.
//
// Source: the Debian package `dataset-fashion-mnist`, which installs
//     /usr/share/datasets/fashion-mnist/{train,t10k}-{images-idx3,labels-idx1}-ubyte.gz
// The directory is found in this order: an explicit directory (experiment config
// "data_dir"), the environment variable FP8LAB_FASHION_MNIST_DIR, then the package's path.
#pragma once

#include "training/idx_reader.h"

#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

namespace fp8lab {

/// The data set is not installed where we looked. what() says where we looked and how to
/// install it (`sudo apt-get install dataset-fashion-mnist`) or point FP8LAB_FASHION_MNIST_DIR at it.
struct DatasetMissingError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// The Debian package's install directory.
inline constexpr const char* kFashionMnistPackageDir = "/usr/share/datasets/fashion-mnist";
/// The environment variable that overrides it.
inline constexpr const char* kFashionMnistEnvVar = "FP8LAB_FASHION_MNIST_DIR";
/// The ten class names, by label.
const std::vector<std::string>& fashionMnistClassNames();

/// Images and labels of one split.
struct ImageDataset {
  int64_t count = 0;        ///< number of images n
  int rows = 28, cols = 28; ///< image size
  int64_t features() const { return int64_t{rows} * cols; }
  /// n × features float32 pixels scaled to [0, 1] (byte / 255, rounded once to float32), row-major.
  std::vector<float> pixels;
  std::vector<uint8_t> labels; ///< n labels in 0..9
  /// The first min(n, count) images as a new data set (n ≤ 0: all).
  ImageDataset head(int64_t n) const;
};

/// Train and test split.
struct FashionMnist {
  ImageDataset train, test;
  std::filesystem::path directory; ///< where the files were read from
};

/// Resolves the data directory: `explicit_dir` when non-empty, else $FP8LAB_FASHION_MNIST_DIR
/// when set and non-empty, else kFashionMnistPackageDir. Does not check that it exists.
std::filesystem::path fashionMnistDirectory(const std::filesystem::path& explicit_dir = {});

/// The path of one file in `dir`: "<stem>.gz" if it exists, else the unpacked "<stem>" if that
/// exists, else "<stem>.gz" (for the error message). stem e.g. "train-images-idx3-ubyte".
std::filesystem::path fashionMnistFile(const std::filesystem::path& dir, const std::string& stem);

/// Loads both splits. `train_limit` / `test_limit` > 0 keep only the first that many images
/// (the whole file is still read and validated). Throws DatasetMissingError when the directory
/// or a file is absent, IdxError on a malformed file, and IdxError when images and labels
/// disagree (counts, 28×28 size, label > 9).
FashionMnist loadFashionMnist(const std::filesystem::path& explicit_dir = {}, int64_t train_limit = 0,
                              int64_t test_limit = 0);

/// Loads one split ("train" or "t10k") from `dir`, with the checks of loadFashionMnist().
ImageDataset loadFashionMnistSplit(const std::filesystem::path& dir, const std::string& split, int64_t limit = 0);

} // namespace fp8lab
