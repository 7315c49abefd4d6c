#!/usr/bin/env python3
#SBATCH -J py
#SBATCH -t 3
print("hi")
