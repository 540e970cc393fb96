commbench --fit
