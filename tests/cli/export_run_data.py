# SPDX-License-Identifier: GPL-3.0-or-later
# The data side of tests/cli/test_export_run.sh (Debian's python3-numpy and python3-pil):
#   images OUT.npy FILE...          the images as one uint8 [N, H, W, C] array (RGB, or grey with --grey first)
#   resized SRC DST W H [STEP]      every STEP-th (default 1) SRC/<class>/<name>, by sorted path, resized (PIL
#                                   bicubic) to W x H (0 0: as it is) as DST/<class>/<name>.png
#   columns TABLE.csv DIR LABEL     each column but LABEL as DIR/<column>.npy [N, 1]: numbers float32 (empty: NaN),
#                                   any other column unicode strings
#   pets T.csv U.csv ROWS           a table to train on (x, colour, y -> label cat|dog|owl; missing numbers
#                                   and colours, NA) and U.csv, the same rows with every 31st colour one T never has
#   compare PREDICTIONS.csv FILES PROBS.npy CLASS...   max |p - q|: p from kiln predict's CSV (--top-k with every
#                                   class; rows by input name, FILES lists them in PROBS.npy's order), q = PROBS.npy
#   peak COMMAND...                 runs COMMAND (its output dropped) and prints its peak resident memory in MiB;
#                                   exits with its status
import csv, glob, os, random, resource, subprocess, sys
import numpy as np
from PIL import Image

cmd, args = sys.argv[1], sys.argv[2:]
if cmd == "images":
    mode = "RGB"
    if args[0] == "--grey":
        mode, args = "L", args[1:]
    a = np.stack([np.asarray(Image.open(f).convert(mode)) for f in args[1:]])
    np.save(args[0], a.reshape(a.shape[:3] + (-1,)))
elif cmd == "resized":
    src, dst, w, h = args[0], args[1], int(args[2]), int(args[3])
    step = int(args[4]) if len(args) > 4 else 1
    for f in sorted(glob.glob(os.path.join(src, "*", "*")))[::step]:
        out = os.path.join(dst, os.path.basename(os.path.dirname(f)), os.path.splitext(os.path.basename(f))[0] + ".png")
        os.makedirs(os.path.dirname(out), exist_ok=True)
        im = Image.open(f)
        (im.resize((w, h), Image.BICUBIC) if w > 0 else im).save(out)
elif cmd == "columns":
    rows = list(csv.DictReader(open(args[0])))
    for name in rows[0]:
        if name == args[2]:
            continue
        v = [r[name] for r in rows]
        try:
            a = np.array([[float(x) if x != "" else np.nan] for x in v], dtype=np.float32)
        except ValueError:
            a = np.array([[x] for x in v])
        np.save(os.path.join(args[1], name + ".npy"), a)
elif cmd == "pets":
    random.seed(1)
    colours = ["red", "green", "blue"]
    with open(args[0], "w") as t, open(args[1], "w") as u:
        for f in t, u:
            f.write("x,colour,y,label\n")
        for i in range(int(args[2])):
            k = i % 3
            c = colours[k] if random.random() < 0.8 else random.choice(colours)
            x = "" if i % 17 == 0 else "%.3f" % random.gauss(2 * k, 0.7)
            c = "" if i % 23 == 0 else "NA" if i % 29 == 0 else c
            row = "%s,%%s,%.3f,%s\n" % (x, random.gauss(-k, 0.7), ["cat", "dog", "owl"][k])
            t.write(row % c)
            u.write(row % ("purple" if i % 31 == 0 else c))
elif cmd == "compare":
    rows = {r["input"]: r for r in csv.DictReader(open(args[0]))}
    q = np.load(args[2])
    classes = args[3:]
    p = np.zeros_like(q)
    for i, f in enumerate(line.strip() for line in open(args[1])):
        r = rows[f]
        for k in [""] + ["_%d" % j for j in range(2, len(classes) + 1)]:
            p[i, classes.index(r["class" + k])] = float(r["probability" + k])
    print("%.3g" % np.abs(p - q).max())
elif cmd == "peak":
    r = subprocess.run(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024)
    sys.exit(r.returncode)
else:
    sys.exit("unknown command " + cmd)
