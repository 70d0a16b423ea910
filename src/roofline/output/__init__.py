"""Every renderer: reports, what-ifs, hardware views and probe results as table, Markdown,
CSV, HTML and JSON. Takes data, returns text; computes nothing a user acts on."""
