#!/bin/bash

#PBS -l naccelerators=1
#SBATCH --kill-on-invalid-dep=yes

echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
