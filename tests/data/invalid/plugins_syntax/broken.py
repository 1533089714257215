from skilleval import assertion

@assertion("broken")
def broken(check)
    return True
