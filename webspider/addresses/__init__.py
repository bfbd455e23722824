"""The address policy: no request to loopback, private, link-local, CGNAT,
multicast, reserved or unspecified addresses (README, "Hostile web")."""
