"""Generated gRPC stubs (scripts/genproto-python.sh); do not edit."""
