"""`treesplit bench` kinds owned by viz/."""
