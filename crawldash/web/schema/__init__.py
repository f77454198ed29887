"""The OpenAPI 3.1 document: its builder, and each route family's operations."""
