"""Credentials stay with their origin: Authorization, Proxy-Authorization and
Cookie go only to the origins they belong to (README, "Hostile web")."""
