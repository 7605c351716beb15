"""Real services the tests start on 127.0.0.1: Azurite, a Kusto management stand-in, an ingestion worker, a stand-in
Kusto query engine (duckdb-kql over DuckDB, ``kusto_cluster``), Microsoft's Kusto.Language parser (``kusto_language``)
and a canned-frame Kusto fault endpoint (``kusto_faults``)."""
