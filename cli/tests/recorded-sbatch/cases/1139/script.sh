#!/bin/bash
#BSUB -J lsfname
echo "job $SLURM_JOB_ID on $(hostname)"
sleep 1
