// Internal to the CPU backend (and its tests): which instruction set the float kernels
// use. Each one is compiled for baseline x86-64, AVX2+FMA and AVX-512 (F/VL/BW/DQ) and
// the best level the CPU runs is picked at the first kernel call.
#pragma once
#include <cstdint>

namespace kiln::cpu {

enum class Isa : uint8_t { base, avx2, avx512 };
// The level in use: the best this CPU runs, capped by KILN_CPU_ISA=base|avx2|avx512.
Isa cpu_isa();
// Caps the level for this process (tests run every variant); returns the level now in use.
Isa set_cpu_isa(Isa isa);

}  // namespace kiln::cpu
