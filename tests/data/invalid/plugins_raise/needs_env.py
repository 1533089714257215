import os

SETTING = os.environ["SKILLEVAL_NO_SUCH_SETTING"]
