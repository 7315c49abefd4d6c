#!/bin/bash
#SBATCH --wckey k1
#SBATCH --outp ab-%j.out

echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
