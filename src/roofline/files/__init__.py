"""Reading user files safely: bounded YAML parsing (``safe_yaml``) and typed field access that
names the file and the field path in every error (``fields``). Imports nothing above
``roofline.errors``."""
