/* The secured servers' tests (run-tests --tls, from test/test-tls.sh):
 * T(name, time limit s). */
T(tls_wrong_ca_fails_etls, 30)
T(tls_expired_server_certificate_fails_etls, 30)
T(tls_untrusted_client_certificate_fails_etls, 30)
T(tls_client_at_a_plain_port_times_out_with_a_hint, 30)
T(plain_client_at_a_tls_port_times_out_with_a_hint, 30)
T(tls_encrypted_key_with_its_passphrase, 30)
T(sasl_wrong_password_fails_eauth, 30)
T(sasl_password_from_a_callback, 30)
