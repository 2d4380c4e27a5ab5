"""`arkfs serve`: one HTTP service that is both an ARK name mapping authority and a XET CAS."""
