// gemm_fast.glsl with 8-deep K slices.
#version 460
#define BK 8
#include "gemm_fast.glsl"
