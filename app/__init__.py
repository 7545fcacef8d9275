"""The FEAT Streamlit app. Pure helpers live here (io, metrics, figures, downloads,
baselines, state); the pages live in app/views/. Start it with `bash scripts/app.sh`."""
