devices --calibrate --math fp32,fp8
