-- Delegated signers are proven by a capability blob; name the signer column for what it holds.
ALTER TABLE account_authorizations RENAME COLUMN signer TO signer_id;
ALTER TABLE account_authorizations ADD COLUMN capability_cid TEXT;
