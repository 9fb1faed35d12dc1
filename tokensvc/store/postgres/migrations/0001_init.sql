-- Hashes are the callers' SHA-256 of token values; secrets are sealed BYTEA.
-- NULL times are unset; a NULL expires_at on clients and upstream_tokens
-- means never.

CREATE TABLE clients (
	id                         TEXT PRIMARY KEY,
	kind                       TEXT NOT NULL,
	secret_hash                BYTEA,
	name                       TEXT NOT NULL,
	redirect_uris              TEXT[],
	grant_types                TEXT[],
	response_types             TEXT[],
	token_endpoint_auth_method TEXT NOT NULL,
	scope                      TEXT NOT NULL,
	created_at                 TIMESTAMPTZ,
	expires_at                 TIMESTAMPTZ,
	last_used_at               TIMESTAMPTZ
);
CREATE INDEX clients_expires_at ON clients (expires_at) WHERE expires_at IS NOT NULL;

CREATE TABLE auth_codes (
	hash           BYTEA PRIMARY KEY,
	client_id      TEXT NOT NULL,
	session_id     TEXT NOT NULL,
	subject        TEXT NOT NULL,
	redirect_uri   TEXT NOT NULL,
	code_challenge TEXT NOT NULL,
	scope          TEXT NOT NULL,
	resource       TEXT NOT NULL,
	created_at     TIMESTAMPTZ,
	expires_at     TIMESTAMPTZ
);
CREATE INDEX auth_codes_expires_at ON auth_codes (expires_at);

CREATE TABLE sessions (
	id               TEXT PRIMARY KEY,
	subject          TEXT NOT NULL,
	email            TEXT NOT NULL,
	name             TEXT NOT NULL,
	groups           TEXT[],
	claims           BYTEA,
	idp_tokens       BYTEA,
	idp_token_expiry TIMESTAMPTZ,
	created_at       TIMESTAMPTZ,
	expires_at       TIMESTAMPTZ,
	revoked_at       TIMESTAMPTZ,
	version          BIGINT NOT NULL
);
CREATE INDEX sessions_expires_at ON sessions (expires_at);

CREATE TABLE grants (
	id         TEXT PRIMARY KEY,
	client_id  TEXT NOT NULL,
	session_id TEXT NOT NULL,
	subject    TEXT NOT NULL,
	scope      TEXT NOT NULL,
	resource   TEXT NOT NULL,
	created_at TIMESTAMPTZ,
	expires_at TIMESTAMPTZ,
	revoked_at TIMESTAMPTZ
);
CREATE INDEX grants_session_id ON grants (session_id, created_at);
CREATE INDEX grants_expires_at ON grants (expires_at);

CREATE TABLE refresh_tokens (
	hash       BYTEA PRIMARY KEY,
	grant_id   TEXT NOT NULL,
	created_at TIMESTAMPTZ,
	expires_at TIMESTAMPTZ,
	used_at    TIMESTAMPTZ
);
CREATE INDEX refresh_tokens_grant_id ON refresh_tokens (grant_id);
CREATE INDEX refresh_tokens_expires_at ON refresh_tokens (expires_at);

CREATE TABLE access_tokens (
	hash       BYTEA PRIMARY KEY,
	grant_id   TEXT NOT NULL,
	client_id  TEXT NOT NULL,
	session_id TEXT NOT NULL,
	subject    TEXT NOT NULL,
	scope      TEXT NOT NULL,
	resource   TEXT NOT NULL,
	created_at TIMESTAMPTZ,
	expires_at TIMESTAMPTZ
);
CREATE INDEX access_tokens_grant_id ON access_tokens (grant_id);
CREATE INDEX access_tokens_expires_at ON access_tokens (expires_at);

CREATE TABLE browser_cookies (
	hash       BYTEA PRIMARY KEY,
	session_id TEXT NOT NULL,
	host       TEXT NOT NULL,
	created_at TIMESTAMPTZ,
	expires_at TIMESTAMPTZ
);
CREATE INDEX browser_cookies_session_id ON browser_cookies (session_id);
CREATE INDEX browser_cookies_expires_at ON browser_cookies (expires_at);

CREATE TABLE upstream_tokens (
	subject    TEXT NOT NULL,
	route_id   TEXT NOT NULL,
	sealed     BYTEA,
	expires_at TIMESTAMPTZ,
	updated_at TIMESTAMPTZ,
	PRIMARY KEY (subject, route_id)
);
CREATE INDEX upstream_tokens_expires_at ON upstream_tokens (expires_at) WHERE expires_at IS NOT NULL;

CREATE TABLE one_times (
	hash       BYTEA PRIMARY KEY,
	kind       TEXT NOT NULL,
	payload    BYTEA,
	expires_at TIMESTAMPTZ
);
CREATE INDEX one_times_expires_at ON one_times (expires_at);
