"""Around the model seam (`chat(messages) -> Reply`): the HTTP client, its retries, and reading replies."""
