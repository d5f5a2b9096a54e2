-- The trigger's name, prompt and matched conditions as seen at admission.
ALTER TABLE trigger_firings ADD COLUMN context_cbor BLOB;
