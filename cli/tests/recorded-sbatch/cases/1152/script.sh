#!/bin/bash
#BSUB -P proj
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
