#!/usr/bin/env bash
#SBATCH -J envbash
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
