-- The gateway's own client registrations at upstream authorization servers
-- (store.UpstreamClients, upstream_discovery routes).
CREATE TABLE upstream_clients (
	issuer       TEXT NOT NULL,
	redirect_uri TEXT NOT NULL,
	sealed       BLOB,
	expires_at   INTEGER, -- NULL: never
	created_at   INTEGER NOT NULL,
	PRIMARY KEY (issuer, redirect_uri)
) STRICT;
