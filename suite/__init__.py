"""Accuracy and benchmark suite for Apache TVM kernels."""
