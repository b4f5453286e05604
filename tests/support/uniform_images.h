// FP8 Lab tests — training images whose every value is known: every pixel 0.5 except pixel
// kHotPixel = 1.0, labels i % 10. Whatever the shuffle, every batch row is the same image, so the
// amax, scales and SQNRs of a step can be derived by hand (every element of a batch is 0.5 or 1.0).
#pragma once

#include "training/fashion_mnist.h"

#include <cstdint>

namespace fp8lab::test {

/// The one pixel of value 1.0 in every image (the others are 0.5).
constexpr int64_t kHotPixel = 300;

/// `n` identical 28×28 images as above.
inline ImageDataset uniformImages(int64_t n) {
  ImageDataset d;
  d.count = n;
  d.pixels.assign(static_cast<size_t>(n * 784), 0.5f);
  d.labels.resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    d.pixels[static_cast<size_t>(i * 784 + kHotPixel)] = 1.0f;
    d.labels[static_cast<size_t>(i)] = static_cast<uint8_t>(i % 10);
  }
  return d;
}

/// 512 such images (8 batches of 64 an epoch) and 16 for testing, built once.
inline const ImageDataset& uniformTrainSet() {
  static const ImageDataset d = uniformImages(512);
  return d;
}
inline const ImageDataset& uniformTestSet() {
  static const ImageDataset d = uniformImages(16);
  return d;
}

} // namespace fp8lab::test
