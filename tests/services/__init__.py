"""Real services the tests start on 127.0.0.1: Azurite, a Kusto management stand-in, an ingestion worker."""
