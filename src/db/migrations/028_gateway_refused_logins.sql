-- A gateway still dialling with its old password after a rotation (or a wrong client id) was refused by the broker and
-- simply read offline: nothing told the operator why. The time of the last refused login as the gateway is kept here.
ALTER TABLE gateways ADD COLUMN last_refused_at timestamptz;
COMMENT ON COLUMN gateways.last_refused_at IS 'the last login as this gateway the broker refused (wrong password or client id); written at most once a minute per gateway and instance';
