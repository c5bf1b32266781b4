// 1-bit sign compression: the pure parts (packing, unpacking, error
// feedback), tested exactly.
//
// A chunk of n floats becomes one scale and n sign bits: bit i set means
// x[i] >= 0 (zero counts as positive). It decodes to scale * (+1 or -1).
// The scale is the mean magnitude of the chunk, the one scale that
// minimises the squared error of that decoding. NaN entries make the scale
// NaN, so a NaN gradient shows in the result instead of vanishing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace weft::compress {

// Bytes of one packed chunk of `elems` entries: an 8-byte header holding the
// float scale, then the sign bits in 64-bit words.
size_t signBlockBytes(size_t elems);

// Packs x into block (signBlockBytes(x.size()) bytes); returns the scale.
float packSigns(std::span<const float> x, void* block);

// out[i] = scale * (bit i ? +1 : -1) for i < out.size(); assign or add.
void unpackSigns(const void* block, std::span<float> out);
void unpackSignsAdd(const void* block, std::span<float> out);

// Error feedback: residual = x - decode(block), the part the block missed.
void signResidual(std::span<const float> x, const void* block, std::span<float> residual);

}  // namespace weft::compress
