-- The refresh lease of an Internal Token (store.UpstreamLeases): who is
-- refreshing it and until when. NULL: nobody.
ALTER TABLE upstream_tokens ADD COLUMN lease_holder TEXT;
ALTER TABLE upstream_tokens ADD COLUMN lease_until INTEGER;
