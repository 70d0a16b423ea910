"""What a network computes, independent of any device: dtypes, the ``Gemm`` and ``Op`` records,
layer types (``layers/``), the ``Network`` read from model.yaml, and the Hugging Face
config.json adapters (``hf``)."""
