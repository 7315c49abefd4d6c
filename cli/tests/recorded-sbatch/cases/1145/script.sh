#!/bin/bash
#BSUB -o lsf.%J.out -e lsf.err
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
