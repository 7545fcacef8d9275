"""FEAT app entry point: `python3 -m streamlit run app/main.py` (or `bash scripts/app.sh`)."""
from __future__ import annotations

import logging
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # `streamlit run` puts app/ on the path, not the repo root
    sys.path.insert(0, str(ROOT))

import streamlit as st  # noqa: E402

from app import engine, state  # noqa: E402

st.set_page_config(page_title="FEAT: tables, zero-shot", page_icon=":material/table_chart:", layout="wide")

pages = [
    st.Page("views/data.py", title="Data", icon=":material/table:", default=True),
    st.Page("views/predict.py", title="Predict", icon=":material/online_prediction:"),
    st.Page("views/impute.py", title="Impute", icon=":material/healing:"),
    st.Page("views/masking.py", title="Masking demo", icon=":material/grid_off:"),
    st.Page("views/relations.py", title="Relations", icon=":material/hub:"),
]
nav = st.navigation(pages)
state.restore_session()        # a reload keeps the table and the results

with st.sidebar:
    st.markdown("### FEAT")
    try:
        info = state.model_info()
    except Exception as e:  # a missing or corrupt checkpoint: say so, keep the app usable for data
        info = None
        st.error(f"The FEAT checkpoint could not be loaded: {e}\n\nRun `bash scripts/setup.sh` or "
                 "restore assets/feat-small.pt.", icon=":material/error:")
    if info:
        dev = info["device"]
        st.markdown(f"**Device:** {'CUDA GPU' if dev.startswith('cuda') else 'CPU'} (`{dev}`)")
        st.markdown(f"**Model:** {info['name']}")
        with st.expander("About the model"):
            st.markdown(engine.analyst_card(info))
            if st.toggle("The full model card, with how it was trained", key="full_card"):
                st.markdown(info["card"] or f"No model card next to `{Path(info['path']).name}` yet.")
    ds = state.dataset()
    if ds is None:
        st.markdown("**Dataset:** none loaded")
    else:
        df = ds["df"]
        st.markdown(f"**Dataset:** {ds['name']}  \n{df.shape[0]:,} rows x {df.shape[1]} columns ({ds['source']})")

try:
    nav.run()
except Exception as e:  # last resort: a bug must not show the user a traceback
    logging.getLogger("feat.app").exception("unhandled error in page %s", nav.title)
    st.error(f"**Something went wrong on this page** ({type(e).__name__}: {str(e)[:300]}).\n\n"
             "Your data is unchanged. Try again with other settings, or reload the page; the full error "
             "is in the server log.", icon=":material/error:")
finally:                       # also when a page stops early (st.stop) or reruns
    state.save_session()
