"""Apache Hudi's own Spark writer, reader and procedures as a judge of the tables the engine
writes: the release cache (provision.py), the server that runs in each release's JVM
(server.py), its client (client.py) and the session fixture (fixtures.py). Tests only."""
