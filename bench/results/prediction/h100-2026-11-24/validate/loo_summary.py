import csv,statistics as st,sys
rows=list(csv.DictReader(open(sys.argv[1])))
for mode in ['graph','free']:
    for b in ['1','8','32','all']:
        e=[abs(float(r['error_pct'])) for r in rows if r['mode']==mode and (b=='all' or r['batch']==b)]
        print('LOO %-5s b=%-3s n=%3d latency median %5.1f%% worst %6.1f%% within10 %3.0f%%'%(mode,b,len(e),st.median(e),max(e),100*sum(x<=10 for x in e)/len(e)))
e=[abs(float(r['error_pct'])) for r in rows]
print('LOO all   n=%3d latency median %.1f%% worst %.1f%%'%(len(e),st.median(e),max(e)))
en=[abs(float(r['energy_error_pct'])) for r in rows if r['energy_error_pct']]
print('LOO energy (graph) n=%d median %.1f%% worst %.1f%%'%(len(en),st.median(en),max(en)))
