"""Where archives live, as the publisher and the mount see it: the embedded store or a server."""
