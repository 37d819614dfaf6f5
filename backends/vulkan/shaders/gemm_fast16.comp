// gemm_fast.glsl with 16-deep K slices.
#version 460
#define BK 16
#include "gemm_fast.glsl"
