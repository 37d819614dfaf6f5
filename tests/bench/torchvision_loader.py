# SPDX-License-Identifier: GPL-3.0-or-later
# torchvision's side of tests/bench/data_vs_torchvision.sh: ImageFolder + DataLoader with PIL
# (Debian's python3-torchvision), THREADS worker processes of one thread each, batches of 64,
# RandomResizedCrop(224, antialias) + RandomHorizontalFlip + ToTensor + Normalize(ImageNet's);
# and decode only (PIL open + convert("RGB") in THREADS processes). Prints lines in
# bench_image_loader's format.
#   python3 torchvision_loader.py DIR THREADS [EPOCHS=2]
import sys, time
import torch
from torch.utils.data import DataLoader
from torchvision import datasets, transforms
from multiprocessing import Pool
from PIL import Image

def decode(path):
    with Image.open(path) as im:
        im.convert("RGB").load()

def main():
    root, threads = sys.argv[1], int(sys.argv[2])
    epochs = int(sys.argv[3]) if len(sys.argv) > 3 else 2
    torch.set_num_threads(1)
    tf = transforms.Compose([transforms.RandomResizedCrop(224, antialias=True), transforms.RandomHorizontalFlip(),
                             transforms.ToTensor(),
                             transforms.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])])
    ds = datasets.ImageFolder(root, transform=tf)
    n = len(ds)
    def report(what, seconds):
        rate = n / seconds
        print("torchvision %-22s %6d images %7.2f s %8.1f images/s %7.1f images/s/thread" %
              (what, n, seconds, rate, rate / threads), flush=True)
    t0 = time.perf_counter()
    with Pool(threads) as pool:
        pool.map(decode, [p for p, _ in ds.samples], chunksize=16)
    report("decode only", time.perf_counter() - t0)
    loader = DataLoader(ds, batch_size=64, shuffle=True, num_workers=threads, persistent_workers=True,
                        worker_init_fn=lambda _: torch.set_num_threads(1))
    for e in range(epochs):
        t0 = time.perf_counter()
        for x, y in loader:
            pass
        report("epoch %d" % (e + 1), time.perf_counter() - t0)

if __name__ == "__main__":
    main()
