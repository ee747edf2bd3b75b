"""What is studied, free of I/O and clocks: games, transposition table, UCT, parallel roles, trace schema."""
