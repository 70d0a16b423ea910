"""The tables a capture reads an aten op by, data only: the ops that move nothing
(``FREE_OPS``), the FLOPs of an op's element (``FLOPS_PER_ELEMENT``), the arguments an op takes
for their shape only (``SHAPE_ONLY_ARGS``), the reductions, whose FLOPs count per element read
(``REDUCTIONS``), and the copies (``COPIES``). ``capture_ops`` applies them; the tables of one
kind of op live beside the code that reads them (``capture_gemms``, ``capture_indexed``,
``capture_losses``, ``capture_shapes``)."""

from __future__ import annotations

#: Ops that move no data: views, metadata, allocation without writing, and the in-place forms
#: that change a tensor's shape or strides only (``squeeze_``: torch.matmul's vector times a
#: matrix squeezes its product in place); any other op whose schema makes its output a view of
#: its input (``OpOverload.is_view``: ``unfold``, ``view_as_real``, ...) moves nothing either
#: (``_record``).
FREE_OPS = frozenset({
    "view", "_unsafe_view", "reshape", "t", "transpose", "permute", "expand", "as_strided",
    "detach", "alias", "unsqueeze", "squeeze", "select", "slice", "split", "split_with_sizes",
    "unbind", "chunk", "empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided",
    "_reshape_alias", "lift_fresh", "scalar_tensor", "unflatten", "flatten", "view_as",
    "_to_copy_meta", "narrow", "diagonal", "movedim", "expand_as", "numpy_T", "mT",
    "squeeze_", "unsqueeze_", "t_", "transpose_", "as_strided_", "detach_", "swapdims_",
    "swapaxes_",
})
#: FLOPs per output element of the ops whose count is known: an arithmetic op of one output
#: element per operation 1; the activations and norms as ``model/ops.ELEMENTWISE`` counts them
#: (GELU 8, SiLU 4, layer norm 8, softmax 5 per element; their backward 12, 8, 12, 4).
FLOPS_PER_ELEMENT = {
    **{name: 1 for name in ("add", "sub", "mul", "div", "neg", "relu", "threshold_backward",
                            "rsqrt", "sqrt", "exp", "log", "tanh", "sigmoid", "pow", "where",
                            "maximum", "minimum", "clamp", "addcmul", "addcdiv", "reciprocal",
                            "abs", "sign", "lerp", "fill", "zero", "masked_fill", "rsub",
                            "tril", "triu", "eq", "ne", "lt", "gt", "le", "ge", "sum", "mean",
                            "amax", "max", "min", "cumsum", "tanh_backward",
                            "sigmoid_backward", "sin", "cos", "sgn", "floor_divide",
                            "remainder", "bitwise_and", "bitwise_or", "logical_and",
                            "logical_or", "logical_not", "histc",
                            "bernoulli", "bitwise_not")},
    **{name: 0 for name in ("clone", "copy", "_to_copy", "cat", "stack", "embedding",
                            "embedding_dense_backward", "index_select", "gather", "scatter",
                            "scatter_add", "index", "index_put", "index_copy", "index_fill",
                            "ones", "zeros", "full",
                            "ones_like", "zeros_like", "full_like", "arange", "contiguous",
                            "constant_pad_nd", "repeat", "roll", "new_zeros", "new_ones",
                            "new_full", "_unsafe_index", "masked_select", "slice_backward",
                            "select_backward",
                            # a view's windows' gradients copied back into its input's shape
                            # (UnfoldBackward.cpp; where windows overlap, their adds uncounted)
                            "unfold_backward",
                            # comparisons, not arithmetic (as max pooling's; torch's
                            # FlopCounterMode counts none either): a router's top-k and the
                            # sort of its choices by expert
                            "topk", "sort", "argmax", "argmin")},
    "gelu": 8, "gelu_backward": 12, "silu": 4, "silu_backward": 8,
    "xlogy": 2,  # x log y (where x is 0: 0), the KL divergence's
    # the losses torch computes in one op of several passes: their FLOPs are ``LOSS_PASSES``'
    **{name: 0 for name in ("mse_loss", "mse_loss_backward", "huber_loss",
                            "huber_loss_backward", "smooth_l1_loss", "smooth_l1_loss_backward",
                            "binary_cross_entropy", "binary_cross_entropy_backward",
                            "binary_cross_entropy_with_logits")},
    "native_layer_norm": 8, "native_layer_norm_backward": 12,
    # a group norm's statistics over each group's values, then its scale and shift: a layer
    # norm's work per value (``model/ops.ELEMENTWISE``'s layernorm)
    "native_group_norm": 8, "native_group_norm_backward": 12,
    "_softmax": 5, "_safe_softmax": 5, "_softmax_backward_data": 4,
    "_log_softmax": 5, "_log_softmax_backward_data": 4,
    "native_batch_norm": 8, "_native_batch_norm_legit": 8,
    # eval mode: y = x alpha_c + beta_c, alpha and beta per channel from the running
    # statistics (pytorch aten/src/ATen/native/Normalization.cpp, the inference path of
    # batch_norm_cpu_transform_input_template; cuDNN's inference kernel alike)
    "_native_batch_norm_legit_no_training": 2, "native_batch_norm_backward": 12,
    "max_pool2d_with_indices": 0, "max_pool2d_with_indices_backward": 0,
    "avg_pool2d": 1, "avg_pool2d_backward": 1, "_adaptive_avg_pool2d": 1,
    "_adaptive_avg_pool2d_backward": 1, "native_dropout": 2, "native_dropout_backward": 1,
    # a 3-D map's pooling (a video model's), as the 2-D one's per value
    "max_pool3d_with_indices": 0, "max_pool3d_with_indices_backward": 0,
    "avg_pool3d": 1, "avg_pool3d_backward": 1, "_adaptive_avg_pool3d": 1,
    "_adaptive_avg_pool3d_backward": 1,
    # a weight norm (nn.utils.weight_norm, parametrizations.weight_norm: HiFi-GAN's and
    # WaveNet's convolutions), per value of v (pytorch aten/src/ATen/native/WeightNorm.cpp and
    # cuda/WeightNorm.cu): forward each output channel's norm, sqrt(sum v^2) (a multiply and an
    # add a value), then w = v g / norm (one multiply); backward grad_g = sum(grad_w v) / norm
    # (two a value) and grad_v = g / norm (grad_w - v grad_g / norm) (three)
    "_weight_norm_interface": 3, "_weight_norm_interface_backward": 5,
    # the loss after a log-softmax, per target (``GATHERS``): the forward subtracts each
    # target's gathered value (times its class weight) into the sum, the backward writes one
    # value per target into the zeroed gradient (pytorch aten/src/ATen/native/cuda/Loss.cu,
    # ``nll_loss_forward_reduce_cuda_kernel_2d``, ``nll_loss_backward_reduce_cuda_kernel_2d``;
    # NLLLoss2d.cu and LossNLL.cpp, LossNLL2d.cpp alike); the zero fill computes nothing
    **{name: 1 for name in ("nll_loss_forward", "nll_loss2d_forward", "nll_loss_backward",
                            "nll_loss2d_backward")},
}
#: The argument (by position) an op takes for its shape (or dtype) only, never reading its
#: values: a pooling backward's forward input (``self``; max pooling reads dY and the indices,
#: average pooling dY: aten/src/ATen/native/DilatedMaxPool2d.cpp, AveragePool2d.cpp); the nll
#: loss backward's log-probabilities (``self``: torch zero-fills the gradient, of their shape,
#: then writes one value per target, reading the target, the output gradient, ``total_weight``
#: and the weight at the target: aten/src/ATen/native/cuda/Loss.cu,
#: ``nll_loss_backward_out_cuda``: ``grad_input.zero_()``, then
#: ``nll_loss_backward_reduce_cuda_kernel_2d``; NLLLoss2d.cu, LossNLL.cpp and LossNLL2d.cpp
#: alike); a fill's model tensor (``zeros_like(self)``: ``empty_like(self).zero_()``,
#: ``new_zeros(self, size)``: ``zeros(size, self.options())``, aten/src/ATen/native/
#: TensorFactories.cpp; the backward of ``gather``, ``index``, ``topk``, ``max(dim)`` and
#: ``sort`` starts with ``new_zeros(grad, ...)``); and the tensor an in-place op overwrites
#: without reading it, written only (``copy_(self, src)``: its CUDA kernel's iterator has ``self``
#: as an output, ``src`` its one input, aten/src/ATen/native/Copy.cpp, cuda/Copy.cu; ``fill_``,
#: ``zero_`` and the random fills alike, cuda/FillKernel.cu, DistributionTemplates.h): a slice of
#: a cache assigned (``cache[:, :, a:b] = k``: ``copy_`` of the slice) moves k twice, not three
#: times, and an in-place dropout draws its noise without reading it.
SHAPE_ONLY_ARGS = {"max_pool2d_with_indices_backward": 1, "avg_pool2d_backward": 1,
                   "max_pool3d_with_indices_backward": 1, "avg_pool3d_backward": 1,
                   "nll_loss_backward": 1, "nll_loss2d_backward": 1,
                   **{name: 0 for name in ("zeros_like", "ones_like", "full_like", "new_zeros",
                                           "new_ones", "new_full", "copy_", "fill_", "zero_",
                                           "bernoulli_", "normal_", "uniform_", "random_",
                                           "exponential_", "_foreach_copy_", "_foreach_zero_")}}
#: Ops that reduce their input: their FLOPs count per element read. A norm's backward among
#: them: it reads dY and X whole whichever gradients it writes (the first layer's norm writes
#: its weights' alone, a few values, where its work is the map's)
REDUCTIONS = frozenset({"sum", "mean", "amax", "amin", "max", "min", "histc", "topk", "sort",
                        "argmax", "argmin", "native_layer_norm_backward",
                        "native_group_norm_backward", "native_batch_norm_backward"})
#: Copies: a ``CapturedOp`` of one whose floating-point source is laid out unlike its output
#: (``_permutes``) is ``strided``, the copy ``contiguous()`` or a reshape of a transposed view
#: makes (``torch.matmul`` of a head-split Q or K).
COPIES = frozenset({"clone", "copy", "_to_copy", "contiguous"})
