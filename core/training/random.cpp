// FP8 Lab — xoshiro256** / splitmix64 (public-domain reference algorithms, see random.h).
#include "training/random.h"

#include <cmath>
#include <numbers>

namespace fp8lab {

namespace {
__extension__ typedef unsigned __int128 u128;
inline uint64_t rotl(uint64_t x, int k) {
  return (x << k) | (x >> (64 - k));
}
} // namespace

uint64_t TrainingRng::splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

TrainingRng::TrainingRng(uint64_t seed) {
  uint64_t st = seed;
  for (auto& w : s_) w = splitmix64(st);
}

uint64_t TrainingRng::next() {
  const uint64_t result = rotl(s_[1] * 5, 7) * 9;
  const uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = rotl(s_[3], 45);
  return result;
}

float TrainingRng::uniform01() {
  return static_cast<float>(next() >> 40) * 0x1.0p-24f;
}

float TrainingRng::uniform(float lo, float hi) {
  return lo + (hi - lo) * uniform01();
}

uint64_t TrainingRng::uniformInt(uint64_t n) {
  // Lemire, "Fast Random Integer Generation in an Interval" (2019), 64-bit variant.
  u128 m = static_cast<u128>(next()) * n;
  uint64_t l = static_cast<uint64_t>(m);
  if (l < n) {
    const uint64_t t = (0 - n) % n;
    while (l < t) {
      m = static_cast<u128>(next()) * n;
      l = static_cast<uint64_t>(m);
    }
  }
  return static_cast<uint64_t>(m >> 64);
}

float TrainingRng::normal() {
  // u1 in (0, 1] so log(u1) is finite; 53-bit doubles.
  const double u1 = static_cast<double>((next() >> 11) + 1) * 0x1.0p-53;
  const double u2 = static_cast<double>(next() >> 11) * 0x1.0p-53;
  return static_cast<float>(std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2));
}

void TrainingRng::shuffle(std::vector<int64_t>& v) {
  for (size_t i = v.size(); i > 1; --i) {
    const size_t j = static_cast<size_t>(uniformInt(i));
    std::swap(v[i - 1], v[j]);
  }
}

} // namespace fp8lab
