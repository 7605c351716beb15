"""Sources: readers that turn history files and event files into history rows."""
