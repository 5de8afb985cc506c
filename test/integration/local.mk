# Multi-process integration tests (launched by test/run-suite).
