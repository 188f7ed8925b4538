"""Real ONNX Runtime sessions, always in a child process: placement observations and ORT's own optimizer."""
