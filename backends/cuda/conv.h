// The two conv2d implementations of the CUDA backend (conv.cu picks one). Tensors are
// contiguous NCHW (conv.cu copies others); shapes were checked by conv_geometry.
#pragma once
#include "backends/cuda/cuda_backend.h"

namespace kiln::cuda {

struct ConvGeom {
  int64_t N, C, H, W;  // input
  int64_t K, kH, kW;   // output channels, kernel
  int64_t Ho, Wo;      // output
  Conv2dParams p;
};
// Checks shapes and dtypes (ShapeError / DTypeError naming op) and computes the output size.
ConvGeom conv_geometry(const char* op, const TensorArg& in, const TensorArg& weight, const TensorArg& out,
                       const Conv2dParams& p);
bool use_cudnn();  // built with cuDNN and not KILN_CUDA_CONV=im2col

// conv_im2col.cu: im2col/col2im kernels + cuBLAS (through CudaBackend::matmul).
void im2col_conv_forward(CudaBackend& be, const ConvGeom& g, const TensorArg& out, const TensorArg& in,
                         const TensorArg& w, const TensorArg& bias);
void im2col_conv_backward_input(CudaBackend& be, const ConvGeom& g, const TensorArg& gx, const TensorArg& gy,
                                const TensorArg& w);
void im2col_conv_backward_weight(CudaBackend& be, const ConvGeom& g, const TensorArg& gw, const TensorArg& gy,
                                 const TensorArg& in);
// conv_cudnn.cu (only with KILN_HAVE_CUDNN; otherwise these throw DeviceError).
void cudnn_conv_forward(CudaBackend& be, const ConvGeom& g, const TensorArg& out, const TensorArg& in,
                        const TensorArg& w, const TensorArg& bias);
void cudnn_conv_backward_input(CudaBackend& be, const ConvGeom& g, const TensorArg& gx, const TensorArg& gy,
                               const TensorArg& w);
void cudnn_conv_backward_weight(CudaBackend& be, const ConvGeom& g, const TensorArg& gw, const TensorArg& gy,
                                const TensorArg& in);

}  // namespace kiln::cuda
