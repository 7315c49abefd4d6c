#!/bin/bash
#SBATCH --export=COMBO=1


echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
