-- Times are INTEGER microseconds since the Unix epoch, UTC; NULL is unset.
-- Hashes are the callers' SHA-256 of token values; secrets are sealed BLOBs.

CREATE TABLE clients (
	id                         TEXT PRIMARY KEY,
	kind                       TEXT NOT NULL,
	secret_hash                BLOB,
	name                       TEXT NOT NULL,
	redirect_uris              TEXT,    -- JSON array
	grant_types                TEXT,    -- JSON array
	response_types             TEXT,    -- JSON array
	token_endpoint_auth_method TEXT NOT NULL,
	scope                      TEXT NOT NULL,
	created_at                 INTEGER,
	expires_at                 INTEGER, -- NULL: never
	last_used_at               INTEGER
) STRICT;
CREATE INDEX clients_expires_at ON clients (expires_at) WHERE expires_at IS NOT NULL;

CREATE TABLE auth_codes (
	hash           BLOB PRIMARY KEY,
	client_id      TEXT NOT NULL,
	session_id     TEXT NOT NULL,
	subject        TEXT NOT NULL,
	redirect_uri   TEXT NOT NULL,
	code_challenge TEXT NOT NULL,
	scope          TEXT NOT NULL,
	resource       TEXT NOT NULL,
	created_at     INTEGER,
	expires_at     INTEGER
) STRICT;
CREATE INDEX auth_codes_expires_at ON auth_codes (expires_at);

CREATE TABLE sessions (
	id               TEXT PRIMARY KEY,
	subject          TEXT NOT NULL,
	email            TEXT NOT NULL,
	name             TEXT NOT NULL,
	groups_json      TEXT,    -- JSON array
	claims           BLOB,
	idp_tokens       BLOB,
	idp_token_expiry INTEGER,
	created_at       INTEGER,
	expires_at       INTEGER,
	revoked_at       INTEGER,
	version          INTEGER NOT NULL
) STRICT;
CREATE INDEX sessions_expires_at ON sessions (expires_at);

CREATE TABLE grants (
	id         TEXT PRIMARY KEY,
	client_id  TEXT NOT NULL,
	session_id TEXT NOT NULL,
	subject    TEXT NOT NULL,
	scope      TEXT NOT NULL,
	resource   TEXT NOT NULL,
	created_at INTEGER,
	expires_at INTEGER,
	revoked_at INTEGER
) STRICT;
CREATE INDEX grants_session_id ON grants (session_id, created_at);
CREATE INDEX grants_expires_at ON grants (expires_at);

CREATE TABLE refresh_tokens (
	hash       BLOB PRIMARY KEY,
	grant_id   TEXT NOT NULL,
	created_at INTEGER,
	expires_at INTEGER,
	used_at    INTEGER
) STRICT;
CREATE INDEX refresh_tokens_grant_id ON refresh_tokens (grant_id);
CREATE INDEX refresh_tokens_expires_at ON refresh_tokens (expires_at);

CREATE TABLE access_tokens (
	hash       BLOB PRIMARY KEY,
	grant_id   TEXT NOT NULL,
	client_id  TEXT NOT NULL,
	session_id TEXT NOT NULL,
	subject    TEXT NOT NULL,
	scope      TEXT NOT NULL,
	resource   TEXT NOT NULL,
	created_at INTEGER,
	expires_at INTEGER
) STRICT;
CREATE INDEX access_tokens_grant_id ON access_tokens (grant_id);
CREATE INDEX access_tokens_expires_at ON access_tokens (expires_at);

CREATE TABLE browser_cookies (
	hash       BLOB PRIMARY KEY,
	session_id TEXT NOT NULL,
	host       TEXT NOT NULL,
	created_at INTEGER,
	expires_at INTEGER
) STRICT;
CREATE INDEX browser_cookies_session_id ON browser_cookies (session_id);
CREATE INDEX browser_cookies_expires_at ON browser_cookies (expires_at);

CREATE TABLE upstream_tokens (
	subject    TEXT NOT NULL,
	route_id   TEXT NOT NULL,
	sealed     BLOB,
	expires_at INTEGER, -- NULL: never
	updated_at INTEGER,
	PRIMARY KEY (subject, route_id)
) STRICT;
CREATE INDEX upstream_tokens_expires_at ON upstream_tokens (expires_at) WHERE expires_at IS NOT NULL;

CREATE TABLE one_times (
	hash       BLOB PRIMARY KEY,
	kind       TEXT NOT NULL,
	payload    BLOB,
	expires_at INTEGER
) STRICT;
CREATE INDEX one_times_expires_at ON one_times (expires_at);
