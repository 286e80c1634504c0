"""Tests of the float64 op-chain reference against independent computations."""

import numpy as np
import pytest

from suite.core.reference import accumulation_length, evaluate, evaluate_magnitude, output_shape

RNG = np.random.default_rng(1234)


def chain_of(input_shapes, steps):
    """Build a chain dict; steps are (op, args, attrs) tuples."""
    return {
        "inputs": [{"shape": list(shape), "role": "activation"} for shape in input_shapes],
        "steps": [{"op": op, "args": [list(a) for a in args], "attrs": attrs} for op, args, attrs in steps],
    }


def conv_attrs(strides=(1, 1), padding=(0, 0, 0, 0), dilation=(1, 1), data_layout="NHWC", kernel_layout="HWIO"):
    return {
        "strides": list(strides),
        "padding": list(padding),
        "dilation": list(dilation),
        "groups": 1,
        "data_layout": data_layout,
        "kernel_layout": kernel_layout,
    }


def naive_conv_nhwc_hwio(x, w, strides, padding, dilation):
    """Direct seven-loop convolution with explicit bounds checks for padding."""
    n, h, wd, cin = x.shape
    kh, kw, _, cout = w.shape
    top, left, bottom, right = padding
    oh = (h + top + bottom - dilation[0] * (kh - 1) - 1) // strides[0] + 1
    ow = (wd + left + right - dilation[1] * (kw - 1) - 1) // strides[1] + 1
    out = np.zeros((n, oh, ow, cout))
    for b in range(n):
        for oy in range(oh):
            for ox in range(ow):
                for o in range(cout):
                    total = 0.0
                    for i in range(kh):
                        for j in range(kw):
                            y = oy * strides[0] + i * dilation[0] - top
                            xx = ox * strides[1] + j * dilation[1] - left
                            if 0 <= y < h and 0 <= xx < wd:
                                for c in range(cin):
                                    total += x[b, y, xx, c] * w[i, j, c, o]
                    out[b, oy, ox, o] = total
    return out


@pytest.mark.parametrize(
    "data_layout, kernel_layout",
    [("NHWC", "HWIO"), ("NCHW", "OIHW"), ("NHWC", "OIHW"), ("NCHW", "HWIO")],
)
def test_conv2d_matches_naive_loop(data_layout, kernel_layout):
    x = RNG.standard_normal((2, 9, 8, 3))
    w = RNG.standard_normal((3, 2, 3, 4))
    strides, padding, dilation = (2, 2), (1, 0, 2, 1), (2, 2)
    expected = naive_conv_nhwc_hwio(x, w, strides, padding, dilation)

    x_in = x if data_layout == "NHWC" else x.transpose(0, 3, 1, 2)
    w_in = w if kernel_layout == "HWIO" else w.transpose(3, 2, 0, 1)
    attrs = conv_attrs(strides, padding, dilation, data_layout, kernel_layout)
    chain = chain_of([x_in.shape, w_in.shape], [("conv2d", [("input", 0), ("input", 1)], attrs)])
    result = evaluate(chain, [x_in, w_in])

    if data_layout == "NCHW":
        result = result.transpose(0, 2, 3, 1)
    assert result.shape == expected.shape == (2, 4, 4, 4)
    np.testing.assert_allclose(result, expected, rtol=1e-12, atol=1e-12)
    assert output_shape(chain) == evaluate(chain, [x_in, w_in]).shape


def test_conv2d_single_channel_matches_scipy_correlate():
    import scipy.signal  # here, not at the top: 1-2 s to import, on every xdist worker

    image = RNG.standard_normal((11, 13))
    kernel = RNG.standard_normal((3, 5))
    x, w = image[None, :, :, None], kernel[:, :, None, None]

    valid = chain_of([x.shape, w.shape], [("conv2d", [("input", 0), ("input", 1)], conv_attrs())])
    np.testing.assert_allclose(
        evaluate(valid, [x, w])[0, :, :, 0], scipy.signal.correlate(image, kernel, mode="valid"), rtol=1e-12
    )

    # Odd kernel with half-size zero padding is scipy's centred "same" mode.
    same = chain_of(
        [x.shape, w.shape], [("conv2d", [("input", 0), ("input", 1)], conv_attrs(padding=(1, 2, 1, 2)))]
    )
    np.testing.assert_allclose(
        evaluate(same, [x, w])[0, :, :, 0], scipy.signal.correlate(image, kernel, mode="same"), rtol=1e-12
    )


def test_conv2d_rejects_groups():
    attrs = conv_attrs() | {"groups": 2}
    chain = chain_of([(1, 4, 4, 2), (1, 1, 1, 2)], [("conv2d", [("input", 0), ("input", 1)], attrs)])
    with pytest.raises(ValueError, match="groups"):
        evaluate(chain, [np.ones((1, 4, 4, 2)), np.ones((1, 1, 1, 2))])


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
def test_max_pool2d_padding_never_wins(layout):
    # All values negative: a zero-padded pool would wrongly return 0 at the edges.
    image = -np.arange(1.0, 10.0).reshape(3, 3)
    x = image[None, None] if layout == "NCHW" else image[None, :, :, None]
    attrs = {
        "pool_size": [2, 2],
        "strides": [2, 2],
        "padding": [1, 1, 1, 1],
        "dilation": [1, 1],
        "layout": layout,
        "ceil_mode": False,
    }
    chain = chain_of([x.shape], [("max_pool2d", [("input", 0)], attrs)])
    result = evaluate(chain, [x])
    expected = np.array([[-1.0, -2.0], [-4.0, -5.0]])
    assert result.shape == output_shape(chain)
    np.testing.assert_array_equal(result.reshape(2, 2), expected)


def test_max_pool2d_stride_and_dilation():
    x = RNG.standard_normal((1, 7, 7, 2))
    attrs = {"pool_size": [2, 2], "strides": [1, 2], "padding": [0, 0, 0, 0], "dilation": [2, 1], "layout": "NHWC"}
    chain = chain_of([x.shape], [("max_pool2d", [("input", 0)], attrs)])
    expected = np.empty((1, 5, 3, 2))
    for oy in range(5):
        for ox in range(3):
            patch = x[0, [oy, oy + 2]][:, [2 * ox, 2 * ox + 1]]
            expected[0, oy, ox] = patch.max(axis=(0, 1))
    np.testing.assert_array_equal(evaluate(chain, [x]), expected)


def test_mean_over_spatial_axes():
    x = RNG.standard_normal((2, 4, 5, 3))
    chain = chain_of([x.shape], [("mean", [("input", 0)], {"axis": [1, 2], "keepdims": False})])
    np.testing.assert_allclose(evaluate(chain, [x]), x.mean(axis=(1, 2)), rtol=1e-14)
    assert output_shape(chain) == (2, 3)

    kept = chain_of([x.shape], [("mean", [("input", 0)], {"axis": [-3, -2], "keepdims": True})])
    assert evaluate(kept, [x]).shape == output_shape(kept) == (2, 1, 1, 3)


def test_matmul_with_bias():
    x, w, bias = RNG.standard_normal((4, 5)), RNG.standard_normal((5, 3)), RNG.standard_normal(3)
    chain = chain_of(
        [x.shape, w.shape, bias.shape],
        [("matmul", [("input", 0), ("input", 1)], {}), ("add", [("input", 2), ("step", 0)], {})],
    )
    np.testing.assert_allclose(evaluate(chain, [x, w, bias]), x @ w + bias, rtol=1e-14)
    assert output_shape(chain) == (4, 3)

    batched = chain_of([(2, 4, 5), (5, 3)], [("matmul", [("input", 0), ("input", 1)], {})])
    xb = RNG.standard_normal((2, 4, 5))
    np.testing.assert_allclose(evaluate(batched, [xb, w]), xb @ w, rtol=1e-14)


def residual_chain(x_shape, w_shape, attrs):
    """conv2d + bias add + residual add + relu, as in a ResNet block."""
    out_channels = w_shape[3]
    n, h, wd = x_shape[0], x_shape[1], x_shape[2]
    oh = (h + attrs["padding"][0] + attrs["padding"][2] - w_shape[0]) // attrs["strides"][0] + 1
    ow = (wd + attrs["padding"][1] + attrs["padding"][3] - w_shape[1]) // attrs["strides"][1] + 1
    return chain_of(
        [x_shape, w_shape, (1, 1, 1, out_channels), (n, oh, ow, out_channels)],
        [
            ("conv2d", [("input", 0), ("input", 1)], attrs),
            ("add", [("step", 0), ("input", 2)], {}),
            ("add", [("input", 3), ("step", 1)], {}),
            ("relu", [("step", 2)], {}),
        ],
    )


def test_conv_add_add_relu_chain():
    attrs = conv_attrs(strides=(2, 2), padding=(1, 1, 1, 1))
    chain = residual_chain((1, 8, 8, 3), (3, 3, 3, 5), attrs)
    x, w = RNG.standard_normal((1, 8, 8, 3)), RNG.standard_normal((3, 3, 3, 5))
    bias, residual = RNG.standard_normal((1, 1, 1, 5)), RNG.standard_normal((1, 4, 4, 5))
    # float16 inputs are widened exactly, so the float64 naive result must match.
    inputs = [a.astype(np.float16) for a in (x, w, bias, residual)]
    x, w, bias, residual = (a.astype(np.float64) for a in inputs)

    expected = np.maximum(naive_conv_nhwc_hwio(x, w, (2, 2), (1, 1, 1, 1), (1, 1)) + bias + residual, 0.0)
    result = evaluate(chain, inputs)
    assert result.dtype == np.float64
    assert result.shape == output_shape(chain) == (1, 4, 4, 5)
    np.testing.assert_allclose(result, expected, rtol=1e-12, atol=1e-12)
    assert np.any(result == 0.0) and np.any(result > 0.0)


def test_evaluate_magnitude_uses_abs_values_and_skips_relu():
    x = -np.abs(RNG.standard_normal((3, 4))) - 0.1  # all negative
    w = RNG.standard_normal((4, 2))
    bias = -np.ones(2)
    chain = chain_of(
        [x.shape, w.shape, bias.shape],
        [
            ("relu", [("input", 0)], {}),
            ("matmul", [("step", 0), ("input", 1)], {}),
            ("add", [("step", 1), ("input", 2)], {}),
            ("relu", [("step", 2)], {}),
        ],
    )
    # relu kills the negative input, so the value is relu(-1) everywhere...
    np.testing.assert_array_equal(evaluate(chain, [x, w, bias]), np.zeros((3, 2)))
    # ...while the magnitude sees |x| through both relus.
    expected = np.abs(x) @ np.abs(w) + 1.0
    np.testing.assert_allclose(evaluate_magnitude(chain, [x, w, bias]), expected, rtol=1e-14)


def test_accumulation_length_of_seed_conv_chain():
    attrs = conv_attrs(strides=(2, 2), padding=(0, 0, 0, 0))
    chain = residual_chain((1, 230, 230, 3), (7, 7, 3, 64), attrs)
    assert output_shape(chain) == (1, 112, 112, 64)
    assert accumulation_length(chain) == 7 * 7 * 3 + 2  # two adds after the conv

    oihw = conv_attrs(padding=(1, 1, 1, 1), data_layout="NCHW", kernel_layout="OIHW")
    conv_only = chain_of([(1, 64, 56, 56), (64, 64, 3, 3)], [("conv2d", [("input", 0), ("input", 1)], oihw)])
    assert accumulation_length(conv_only) == 3 * 3 * 64
    assert output_shape(conv_only) == (1, 64, 56, 56)


def test_accumulation_length_of_matmul_mean_and_pool():
    matmul_add = chain_of(
        [(1, 2048), (2048, 1000), (1, 1000)],
        [("matmul", [("input", 0), ("input", 1)], {}), ("add", [("step", 0), ("input", 2)], {})],
    )
    assert accumulation_length(matmul_add) == 2048 + 1

    mean = chain_of([(1, 7, 7, 2048)], [("mean", [("input", 0)], {"axis": [1, 2], "keepdims": False})])
    assert accumulation_length(mean) == 49 + 1  # sum of 49 terms, then the division

    pool_attrs = {"pool_size": [3, 3], "strides": [2, 2], "padding": [1, 1, 1, 1], "layout": "NHWC"}
    pool = chain_of([(1, 112, 112, 64)], [("max_pool2d", [("input", 0)], pool_attrs)])
    assert accumulation_length(pool) == 0
    assert output_shape(pool) == (1, 56, 56, 64)

    relu_only = chain_of([(4,)], [("relu", [("input", 0)], {})])
    assert accumulation_length(relu_only) == 0


def test_unknown_op_is_named_in_the_error():
    chain = chain_of([(2, 2)], [("softmax", [("input", 0)], {"axis": -1})])
    with pytest.raises(ValueError, match="softmax"):
        evaluate(chain, [np.ones((2, 2))])
    with pytest.raises(ValueError, match="softmax"):
        accumulation_length(chain)


def test_input_shape_mismatch_is_rejected():
    chain = chain_of([(2, 2)], [("relu", [("input", 0)], {})])
    with pytest.raises(ValueError, match="shape"):
        evaluate(chain, [np.ones((2, 3))])
