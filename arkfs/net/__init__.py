"""HTTP as a client, for every part that talks to a server (the mount, mirrors, the
resolver, the publisher): the pooled client and reply checks (client), the one retry rule
and its avoid-a-dead-origin window (retry), ranged GETs in worker threads (ranged), and
which bearer token a URL's origin gets (bearer).
"""
