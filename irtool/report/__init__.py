"""Reports on top of the format and analysis layers: summaries (`summary`), tables rendered as
text or Markdown (`tables`), pictures (`render`, `export`)."""
