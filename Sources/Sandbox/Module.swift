// Placeholder so the target builds; replaced as the module grows.
enum SandboxModule {}
