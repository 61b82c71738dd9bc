-- Vectors are compared centred on their model's mean from now on
-- (lossless.embeddings.centring): the vectors stored before are converted in
-- place from the direction they hold, so nothing is embedded again.
-- lcm_centred_vector is registered by the store (repository.register_vector_functions)
-- and centres on lossless/embeddings/means/<model>.json; a model without one
-- keeps its vectors. That file is pinned by tests/test_embedding_centring.py:
-- changing it needs a migration of its own.
UPDATE embeddings SET vector = lcm_centred_vector(model, vector) WHERE vector IS NOT NULL;
-- A process holding the old vectors in memory reloads them.
UPDATE embedding_state SET deletions = deletions + 1;
